"""How fast: the rules, the searches and solvers, the opponents, the lobby and its shards, the
pictures and the first start."""
