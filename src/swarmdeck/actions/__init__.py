"""Things that change the world: cages, runs, kills, locks, moves to the peer."""
