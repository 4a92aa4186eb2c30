"""The simulated world: the true Elo bowl (the only home of ground truth), the
developer's view of it, the pentanomial game-noise model and the random streams."""
