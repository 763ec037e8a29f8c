"""SavedModel export: the serving signatures, the task models' serving adapters, the model types."""
