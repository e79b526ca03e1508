"""The command-line programs (argparse only). Nothing in the library imports this package."""
