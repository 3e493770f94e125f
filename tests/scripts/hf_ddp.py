"""The Hugging Face Trainer under torchrun (two CPU processes, gloo) with graphguard's callback.

    torchrun --nproc_per_node 2 hf_ddp.py unused OUT    # aux_head never called, find_unused_parameters=False
    torchrun --nproc_per_node 2 hf_ddp.py default OUT   # the same model: the Trainer lets DDP find unused ones
"""
import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing is downloaded

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import transformers  # noqa: E402

from graphguard.integrations.transformers import GraphGuardCallback  # noqa: E402


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 16)
        self.head = nn.Linear(16, 2)
        self.aux_head = nn.Linear(16, 2)  # forward never calls it

    def forward(self, x, labels):
        logits = self.head(torch.relu(self.body(x)))
        return {"loss": nn.functional.cross_entropy(logits, labels), "logits": logits}


class Data(torch.utils.data.Dataset):
    def __len__(self):
        return 32

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return {"x": torch.randn(8, generator=g), "labels": torch.tensor(i % 2)}


variant, out = sys.argv[1], sys.argv[2]
args = transformers.TrainingArguments(output_dir=out, max_steps=4, per_device_train_batch_size=4,
                                      report_to=[], save_strategy="no", logging_strategy="no", disable_tqdm=True,
                                      use_cpu=True, dataloader_num_workers=0, ddp_backend="gloo",
                                      # unused: DDP told to expect every gradient; default: the Trainer finds unused ones
                                      ddp_find_unused_parameters=False if variant == "unused" else None)
cb = GraphGuardCallback(fail_on="error")
trainer = transformers.Trainer(model=TwoHeads(), args=args, train_dataset=Data(), callbacks=[cb])
with cb:
    trainer.train()
