import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
np.random.seed(0)


class MultitaskModel(nn.Module):
    """One shared encoder, one head per task (the head is picked by the batch's task)."""

    def __init__(self, encoder, taskmodels_dict):
        super().__init__()
        self.encoder = encoder
        self.taskmodels_dict = nn.ModuleDict(taskmodels_dict)

    @classmethod
    def create(cls, hidden, model_type_dict):
        encoder = nn.Sequential(nn.Embedding(100, hidden), nn.LSTM(hidden, hidden, batch_first=True))
        taskmodels_dict = {task_name: nn.Linear(hidden, num_labels)
                           for task_name, num_labels in model_type_dict.items()}
        return cls(encoder=encoder, taskmodels_dict=taskmodels_dict)

    def forward(self, task_name, input_ids):
        output, _ = self.encoder(input_ids)
        return self.taskmodels_dict[task_name](output[:, -1])


class MultitaskDataloader:
    """Combines several dataloaders; each batch comes from one task, sampled in proportion to its size."""

    def __init__(self, dataloader_dict):
        self.dataloader_dict = dataloader_dict
        self.num_batches_dict = {task_name: len(dataloader) for task_name, dataloader in self.dataloader_dict.items()}
        self.task_name_list = list(self.dataloader_dict)

    def __len__(self):
        return sum(self.num_batches_dict.values())

    def __iter__(self):
        task_choice_list = []
        for i, task_name in enumerate(self.task_name_list):
            task_choice_list += [i] * self.num_batches_dict[task_name]
        task_choice_list = np.array(task_choice_list)
        np.random.shuffle(task_choice_list)
        dataloader_iter_dict = {task_name: iter(dataloader) for task_name, dataloader in self.dataloader_dict.items()}
        for task_choice in task_choice_list:
            task_name = self.task_name_list[task_choice]
            yield task_name, next(dataloader_iter_dict[task_name])


def loader(n, num_labels):
    return DataLoader(TensorDataset(torch.randint(0, 100, (n, 7)), torch.randint(0, num_labels, (n,))), batch_size=8)


model_type_dict = {"stsb": 1, "rte": 2, "commonsense_qa": 5}
multitask_model = MultitaskModel.create(16, model_type_dict)
train_dataloader = MultitaskDataloader({"stsb": loader(48, 1), "rte": loader(24, 2), "commonsense_qa": loader(16, 5)})
optimizer = torch.optim.AdamW(multitask_model.parameters(), lr=1e-3)

for epoch in range(2):
    for step, (task_name, (input_ids, labels)) in enumerate(train_dataloader):
        logits = multitask_model(task_name, input_ids)
        if task_name == "stsb":
            loss = F.mse_loss(logits.squeeze(-1), labels.float())
        else:
            loss = F.cross_entropy(logits, labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    print(epoch, task_name, loss.item())
