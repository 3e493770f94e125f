import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

torch.manual_seed(0)


class ContentLoss(nn.Module):
    def __init__(self, target):
        super(ContentLoss, self).__init__()
        self.target = target

    def forward(self, input):
        self.loss = F.mse_loss(input, self.target)
        return input


cnn = nn.Sequential(
    nn.Conv2d(3, 8, 3, padding=1),
    nn.ReLU(),
    nn.Conv2d(8, 8, 3, padding=1),
    nn.ReLU(),
)
content_img = torch.rand(1, 3, 16, 16)

model = nn.Sequential()
model.add_module("conv_1", cnn[0])
model.add_module("relu_1", cnn[1])
target = model(content_img)
content_loss = ContentLoss(target)
model.add_module("content_loss_1", content_loss)

input_img = (content_img + 0.1 * torch.randn_like(content_img)).requires_grad_(True)
optimizer = optim.LBFGS([input_img])

run = [0]
while run[0] <= 10:

    def closure():
        with torch.no_grad():
            input_img.clamp_(0, 1)
        optimizer.zero_grad()
        model(input_img)
        loss = content_loss.loss
        loss.backward()
        run[0] += 1
        return loss

    optimizer.step(closure)
