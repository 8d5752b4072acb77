"""Summaries of a phase that cite the tape: the summarizer, and the extractive summary the offline model writes."""
