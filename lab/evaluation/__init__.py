"""How a trained agent is measured: exactly where the board is solved, by games beyond; the ceilings."""
