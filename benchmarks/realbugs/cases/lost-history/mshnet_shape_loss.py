import torch
import torch.nn as nn

torch.manual_seed(0)


def SoftIoULoss(pred, target):
    pred = torch.sigmoid(pred)
    smooth = 1
    intersection = pred * target
    loss = (intersection.sum() + smooth) / (pred.sum() + target.sum() - intersection.sum() + smooth)
    return 1 - loss.mean()


def ShapeLoss(pred, target):
    loss = torch.tensor(0.0, requires_grad=True, device=pred.device)
    patch_size = pred.shape[0]
    smooth = 0.001
    for i in range(patch_size):
        _, pred_x, pred_y = torch.where(pred[i] > 0)
        _, target_x, target_y = torch.where(target[i] > 0)

        pred_centerx = torch.sum(pred_x) / (pred_x.shape[0] + smooth)
        pred_centery = torch.sum(pred_y) / (pred_y.shape[0] + smooth)
        target_centerx = torch.sum(target_x) / (target_x.shape[0] + smooth)
        target_centery = torch.sum(target_y) / (target_y.shape[0] + smooth)

        angle_loss = (4 / (torch.pi ** 2)) * (
            torch.square(
                torch.arctan((pred_centery + smooth) / (pred_centerx + smooth))
                - torch.arctan((target_centery + smooth) / (target_centerx + smooth))
            )
        )
        pred_length = torch.sqrt(torch.pow(pred_centerx, 2) + torch.pow(pred_centery, 2))
        target_length = torch.sqrt(torch.pow(target_centerx, 2) + torch.pow(target_centery, 2))
        length_loss = torch.min(pred_length, target_length) / (torch.max(pred_length, target_length) + smooth)
        loss = loss + (1 - length_loss + angle_loss) / patch_size
    return loss


class MSHNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 8, 3, padding=1)
        self.head = nn.Conv2d(8, 1, 1)

    def forward(self, img):
        return self.head(torch.relu(self.stem(img)))


model = MSHNet()
optimizer = torch.optim.Adagrad(model.parameters(), lr=0.05)
img = torch.randn(4, 1, 16, 16)
mask = torch.zeros(4, 1, 16, 16)
mask[:, :, 4:9, 6:12] = 1.0

for epoch in range(4):
    pred = model(img)
    loss_iou = SoftIoULoss(pred, mask)
    loss_shape = ShapeLoss(pred, mask)
    loss = loss_iou + loss_shape
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(epoch, loss_iou.item(), loss_shape.item())
