"""The commands: one module per command, each with the absl flags it reads and a `main`, installed by pip as
`bert-tf-<name with dashes>` (run_classifier.py -> bert-tf-run-classifier) and runnable as
`python -m bert_tf.cli.<name>`; a checkout keeps the original `python run_classifier.py ...` command lines
through thin wrappers at its root. The flag modules (model_flags, training_flags, finetuning_flags,
flag_checks) are shared by the commands; the library outside bert_tf/cli/ never reads flags.
"""
