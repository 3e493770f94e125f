import torch

from shift_net_model import ShiftNetModel

torch.manual_seed(0)

model = ShiftNetModel()
for i in range(3):
    model.set_input(torch.rand(2, 3, 16, 16), torch.rand(2, 3, 16, 16))
    model.optimize_parameters()
