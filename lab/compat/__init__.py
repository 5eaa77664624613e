"""Private APIs of Hydra, Ray and numba: each library's in one module, with the versions it was checked against."""
