"""What a reader sees: the figure style, live panels (Jupyter, Colab) and their static twins (the published page)."""
