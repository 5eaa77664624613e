"""`python -m lab.sweep ...`."""

from lab.sweep import main

main()
