import torch
import torch.nn as nn

from l2 import L2Regularizer
from modules import TrainableNM
from triplet import OnlineTripletLoss

torch.manual_seed(0)


class JasperEncoder(TrainableNM):
    def __init__(self, feat_in=20, d_model=16):
        super().__init__()
        self.conv = nn.Conv1d(feat_in, d_model, 3, padding=1)

    def forward(self, audio_signal):
        return torch.relu(self.conv(audio_signal)).mean(-1)


encoder = JasperEncoder()
l2_regularizer = L2Regularizer()
triplet_loss = OnlineTripletLoss()
optimizer = torch.optim.Adam(encoder.parameters(), lr=1e-3)

audio = torch.randn(12, 20, 30)
labels = torch.arange(4).repeat(3)

for step in range(4):
    embeds = encoder(audio)
    l2_embeds = l2_regularizer(embeds)
    loss = triplet_loss(l2_embeds, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, loss.item())
