"""Example agents gated with the same command as the Northwind one (see examples/faq_bot)."""
