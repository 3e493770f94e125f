import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class SentimentNet(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_classes):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim)
        self.dense = nn.Linear(embed_dim, 16)
        self.dense_agsx = nn.Linear(2, 10)
        self.out = nn.Linear(16, num_classes)

    def forward(self, text, offsets):
        x = self.embedding(text, offsets)
        x = F.relu(self.dense(x))
        return self.out(x)


model = SentimentNet(vocab_size=50, embed_dim=8, num_classes=2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()
for epoch in range(5):
    text = torch.randint(0, 50, (40,))
    offsets = torch.arange(0, 40, 5)
    labels = torch.randint(0, 2, (8,))
    optimizer.zero_grad()
    loss = criterion(model(text, offsets), labels)
    loss.backward()
    optimizer.step()
