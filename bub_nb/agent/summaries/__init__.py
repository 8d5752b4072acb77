"""Summaries of a phase that cite the tape: the summariser, and the extractive summary the offline model writes."""
