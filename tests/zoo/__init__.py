"""The model zoo: stored graphs without weights (models/), their manifest and the weight-filling helper."""
