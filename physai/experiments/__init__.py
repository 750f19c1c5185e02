"""The book's tables, one module per chapter, each registered by name for ``python -m physai NAME``."""
