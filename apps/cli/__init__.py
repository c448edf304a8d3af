"""The citetrace command-line tool."""
