import torch
import torch.nn as nn

device = torch.device("cpu")


class fMRI_LSTM(nn.Module):
    def __init__(self, hidden_dim, input_dim, batch_size=4):
        super(fMRI_LSTM, self).__init__()
        self.hidden_dim = hidden_dim
        self.batch_size = batch_size
        self.lstm = nn.LSTM(input_dim, hidden_dim, num_layers=1, batch_first=True)
        self.linear = nn.Linear(hidden_dim, 1)
        self.hidden = self.init_hidden()
        self.dropout = nn.Dropout(p=0.2)
        self.activate = nn.Sigmoid()

    def init_hidden(self):
        return (torch.randn(1, self.batch_size, self.hidden_dim).to(device),
                torch.randn(1, self.batch_size, self.hidden_dim).to(device))

    def forward(self, x):
        lstm_out, self.hidden = self.lstm(x, self.hidden)
        lstm_out = lstm_out[:, -1, :]
        out = self.dropout(lstm_out)
        linear_output = self.linear(out)
        return self.activate(linear_output).squeeze(1)
