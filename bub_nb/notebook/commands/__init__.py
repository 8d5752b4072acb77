"""What the magics do, one module per magic: each parses nothing and raises one-line ``UsageError``s."""
