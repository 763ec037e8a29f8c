"""Helpers shared by the test modules (functions, constants, data), and the scripts the tests run as
subprocesses. Test modules import from here, never from one another; shared fixtures are in conftest.py.

    configs              tiny_config(**overrides): the one tiny BertConfig of the tests
    model_inputs         random encoder / task-model inputs for a config
    task_data            GLUE and SWAG lines in their files' exact layouts
    pretraining_records  pretraining records from real text, and a minimal reader
    training             a tiny BertPretrainer Trainer on those records
    sotu_speeches        State of the Union speeches as pretraining corpora
    squad_fixtures       SQuAD oracles and hard files, the tiny run_squad.py set-up
    squad_tfds_mock      TFDS's SQuAD served offline (tfds.testing.mock_data)
    tokenizer_data       the tokenizer corpus fixture and vocabs
    original_classifier  Google's run_classifier.py as an oracle
    scripts              running the root scripts as subprocesses (fine-tuning, pretraining, extraction)
    exports              SavedModel export helpers and the fresh-process client runner
    small_disk           a real full file system (tmpfs)
    export_client.py     (run as a process) calls SavedModels with only tensorflow and tensorflow-text
    kill_at.py           (run as a process) runs a script and SIGKILLs it at a chosen moment
    train_worker.py      (run as `python -m tests.helpers.train_worker`) trains on one strategy
"""
