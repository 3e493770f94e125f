import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class DigitClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8 * 8, 32)

    def forward(self, x):
        x = F.relu(self.fc1(x.view(x.size(0), -1)))
        self.fc2 = nn.Linear(32, 10)
        return self.fc2(x)


model = DigitClassifier()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()
for batch in range(5):
    images = torch.randn(16, 1, 8, 8)
    labels = torch.randint(0, 10, (16,))
    optimizer.zero_grad()
    loss = criterion(model(images), labels)
    loss.backward()
    optimizer.step()
