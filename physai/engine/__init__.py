"""Models and runners on MuJoCo: each builds a model, runs it (batched where it can) and reports divergence."""
