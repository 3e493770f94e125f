import torch
import torch.nn as nn

torch.manual_seed(0)

device = torch.device("cpu")


class fMRI_LSTM(nn.Module):
    def __init__(self, hidden_dim, input_dim, batch_size=4):
        super(fMRI_LSTM, self).__init__()
        self.hidden_dim = hidden_dim
        self.batch_size = batch_size
        self.lstm = nn.LSTM(input_dim, hidden_dim, num_layers=1, batch_first=True)
        self.linear = nn.Linear(hidden_dim, 1)
        self.hidden = self.init_hidden()
        self.activate = nn.Sigmoid()

    def init_hidden(self):
        return (torch.randn(1, self.batch_size, self.hidden_dim).to(device),
                torch.randn(1, self.batch_size, self.hidden_dim).to(device))

    def forward(self, x):
        lstm_out, self.hidden = self.lstm(x, self.hidden)
        linear_output = self.linear(lstm_out[:, -1, :])
        return self.activate(linear_output).squeeze(1)


model = fMRI_LSTM(hidden_dim=8, input_dim=10)
criterion = nn.BCELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
train_data = [(torch.randn(4, 6, 10), torch.randint(0, 2, (4,)).float()) for _ in range(4)]

for epoch in range(2):
    for x, y in train_data:
        optimizer.zero_grad()
        output = model(x)
        loss = criterion(output, y)
        loss.backward(retain_graph=True)
        optimizer.step()
