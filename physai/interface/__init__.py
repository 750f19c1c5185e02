"""What a reader sees: the figure style, the result tables and the live panels (on the page and in notebooks)."""
