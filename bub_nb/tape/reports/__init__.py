"""Readable reports of tapes: the Markdown transcript, the budget per phase and what tokens cost."""
