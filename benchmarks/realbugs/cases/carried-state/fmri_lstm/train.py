import torch
import torch.nn as nn

from model import fMRI_LSTM

torch.manual_seed(0)


def run_training_lstm(model, train_data, num_epochs=2, lr=1e-3):
    criterion = nn.BCELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for epoch in range(num_epochs):
        for x, y in train_data:
            optimizer.zero_grad()
            output = model(x)
            loss = criterion(output, y)
            loss.backward()
            optimizer.step()
    return model


if __name__ == "__main__":
    train_data = [(torch.randn(4, 6, 10), torch.randint(0, 2, (4,)).float()) for _ in range(3)]
    model = fMRI_LSTM(hidden_dim=8, input_dim=10, batch_size=4)
    run_training_lstm(model, train_data)
