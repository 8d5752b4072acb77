"""What a user types, read as typed: magic lines and their options, ``{name}`` placeholders, questions ending in
``?`` on a ``%bub`` line, and cells that are comma commands."""
