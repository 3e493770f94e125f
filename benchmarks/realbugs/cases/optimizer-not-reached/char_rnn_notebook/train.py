import torch
import torch.nn as nn

from model import RNN

torch.manual_seed(0)

all_categories = ["en", "fr", "de"]
n_letters = 10
n_hidden = 12
n_categories = len(all_categories)


class Trainer:
    def __init__(self, rnn, learning_rate=0.005):
        self.rnn = rnn
        self.criterion = nn.NLLLoss()
        self.optimizer = torch.optim.SGD(rnn.parameters(), lr=learning_rate)

    def train(self, category_tensor, line_tensor):
        hidden = self.rnn.initHidden()
        self.optimizer.zero_grad()
        for i in range(line_tensor.size()[0]):
            output, hidden = self.rnn(line_tensor[i], hidden)
        loss = self.criterion(output, category_tensor)
        loss.backward()
        self.optimizer.step()
        return output, loss.item()


rnn = RNN(n_letters, n_hidden, n_categories)
trainer = Trainer(rnn)

rnn = RNN(n_letters, n_hidden, n_categories)
for iter in range(6):
    category_tensor = torch.tensor([iter % n_categories])
    line_tensor = torch.randn(5, 1, n_letters)
    output, hidden = None, rnn.initHidden()
    for i in range(line_tensor.size()[0]):
        output, hidden = rnn(line_tensor[i], hidden)
    loss = trainer.criterion(output, category_tensor)
    trainer.optimizer.zero_grad()
    loss.backward()
    trainer.optimizer.step()
