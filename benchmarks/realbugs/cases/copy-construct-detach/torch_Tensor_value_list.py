import torch
import torch.nn as nn
import torch.optim as optim

torch.manual_seed(0)
device = torch.device("cpu")

cnn = nn.Sequential(
    nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2)
)
model = cnn
loss_func = nn.BCEWithLogitsLoss()
optimizer = optim.SGD(cnn.parameters(), lr=0.001, momentum=0.9)

train_data_loader = [(torch.randn(8, 1, 12, 12), torch.randint(0, 2, (8,))) for _ in range(3)]

for epoch in range(1):
    model.train()
    train_loss = 0.0
    for i, (inputs, labels) in enumerate(train_data_loader):
        inputs = inputs.to(device)
        labels = labels.to(device)
        optimizer.zero_grad()
        outputs = model(inputs)
        ret, predictions = torch.max(outputs.data, 1)
        value_list = []
        for i in outputs[:, :1].cpu().detach().numpy():
            for j in i:
                value_list.append(j)
        outputs = torch.Tensor(value_list)
        outputs.requires_grad = True
        outputs = outputs.to(device)
        loss = loss_func(outputs, labels.float())
        loss.backward()
        optimizer.step()
        train_loss += loss.item() * inputs.size(0)
    print(epoch, train_loss)
