"""Where work runs, for grids and searches alike: this process, forks of it, Ray actors; a grid's
worker task."""
