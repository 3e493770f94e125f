"""Callbacks for training frameworks: ``graphguard.integrations.lightning`` (Lightning) and
``graphguard.integrations.transformers`` (Hugging Face ``Trainer``). Neither framework is imported
until its callback is used."""
