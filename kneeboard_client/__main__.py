"""`python -m kneeboard_client check ...`."""

from kneeboard_client.cli import main

main()
