"""Output of a record and its verdict: the terminal, Markdown, HTML, JUnit."""
