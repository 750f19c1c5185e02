"""The book's own tooling: glued numbers, the Colab first cell, the Colab edition and its Build-it checks."""
