import torch
import torch.nn as nn


class TorchMoji(nn.Module):
    def __init__(self, nb_classes, nb_tokens, embed_dim=16, hidden_size=16, return_tensor=True):
        super().__init__()
        self.return_tensor = return_tensor
        self.embed = nn.Embedding(nb_tokens, embed_dim)
        self.lstm_0 = nn.LSTM(embed_dim, hidden_size, batch_first=True)
        self.output_layer = nn.Linear(hidden_size, nb_classes)

    def forward(self, input_seqs):
        x = self.embed(input_seqs)
        lstm_out, _ = self.lstm_0(x)
        outputs = torch.sigmoid(self.output_layer(lstm_out[:, -1]))
        if self.return_tensor:
            outputs = outputs.data
        return outputs
