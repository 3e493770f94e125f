import numpy as np
import torch
import torch.nn as nn
import torch.optim

dtype = torch.FloatTensor


def compare_psnr(image_true, image_test):
    mse = np.mean((image_true.astype(np.float64) - image_test.astype(np.float64)) ** 2)
    return 10 * np.log10(1.0 / mse)


def np_to_torch(img_np):
    return torch.from_numpy(img_np)[None, :]


def torch_to_np(img_var):
    return img_var.detach().cpu().numpy()[0]


def get_noise(input_depth, method, spatial_size, noise_type='u', var=1. / 10):
    shape = [1, input_depth, spatial_size[0], spatial_size[1]]
    net_input = torch.zeros(shape)
    net_input.uniform_()
    net_input *= var
    return net_input


def get_params(opt_over, net, net_input, downsampler=None):
    opt_over_list = opt_over.split(',')
    params = []
    for opt in opt_over_list:
        if opt == 'net':
            params += [x for x in net.parameters()]
        elif opt == 'input':
            net_input.requires_grad = True
            params += [net_input]
    return params


def optimize(optimizer_type, parameters, closure, LR, num_iter):
    if optimizer_type == 'adam':
        optimizer = torch.optim.Adam(parameters, lr=LR)
        for j in range(num_iter):
            optimizer.zero_grad()
            closure()
            optimizer.step()


def conv(in_f, out_f, kernel_size, stride=1, bias=True, pad='reflection'):
    to_pad = int((kernel_size - 1) / 2)
    padder = nn.ReflectionPad2d(to_pad) if pad == 'reflection' else None
    convolver = nn.Conv2d(in_f, out_f, kernel_size, stride, padding=0 if padder else to_pad, bias=bias)
    return nn.Sequential(*[x for x in [padder, convolver] if x is not None])


class Skip(nn.Module):
    def __init__(self, input_depth, n_out, n_down=8, n_skip=2, pad='reflection'):
        super().__init__()
        self.down = nn.Sequential(conv(input_depth, n_down, 3, 2, pad=pad), nn.BatchNorm2d(n_down), nn.LeakyReLU(0.2, inplace=True),
                                  conv(n_down, n_down, 3, pad=pad), nn.BatchNorm2d(n_down), nn.LeakyReLU(0.2, inplace=True))
        self.skip = nn.Sequential(conv(input_depth, n_skip, 1, pad=pad), nn.BatchNorm2d(n_skip), nn.LeakyReLU(0.2, inplace=True))
        self.up = nn.Upsample(scale_factor=2, mode='bilinear')
        self.out = nn.Sequential(nn.BatchNorm2d(n_down + n_skip), conv(n_down + n_skip, n_down, 3, pad=pad),
                                 nn.BatchNorm2d(n_down), nn.LeakyReLU(0.2, inplace=True), conv(n_down, n_out, 1, pad=pad),
                                 nn.Sigmoid())

    def forward(self, x):
        return self.out(torch.cat([self.skip(x), self.up(self.down(x))], dim=1))


torch.manual_seed(0)
np.random.seed(0)
sigma = 25
sigma_ = sigma / 255.
yy, xx = np.mgrid[0:16, 0:16] / 15.0
img_np = np.stack([xx, yy, 0.5 * (xx + yy)]).astype(np.float32)
img_noisy_np = np.clip(img_np + np.random.normal(scale=sigma_, size=img_np.shape), 0, 1).astype(np.float32)

INPUT = 'noise'
pad = 'reflection'
OPT_OVER = 'net'

reg_noise_std = 1. / 30.
LR = 0.01

OPTIMIZER = 'adam'
show_every = 20
exp_weight = 0.99

num_iter = 60
input_depth = 8

net = Skip(input_depth, 3, pad=pad).type(dtype)
net_input = get_noise(input_depth, INPUT, (16, 16)).type(dtype).detach()

mse = torch.nn.MSELoss().type(dtype)

img_noisy_torch = np_to_torch(img_noisy_np).type(dtype)

net_input_saved = net_input.detach().clone()
noise = net_input.detach().clone()
out_avg = None
last_net = None
psrn_noisy_last = 0

i = 0


def closure():

    global i, out_avg, psrn_noisy_last, last_net, net_input

    if reg_noise_std > 0:
        net_input = net_input_saved + (noise.normal_() * reg_noise_std)

    out = net(net_input)

    if out_avg is None:
        out_avg = out.detach()
    else:
        out_avg = out_avg * exp_weight + out.detach() * (1 - exp_weight)

    total_loss = mse(out, img_noisy_torch)
    total_loss.backward()

    psrn_noisy = compare_psnr(img_noisy_np, out.detach().cpu().numpy()[0])
    psrn_gt = compare_psnr(img_np, out.detach().cpu().numpy()[0])
    psrn_gt_sm = compare_psnr(img_np, out_avg.detach().cpu().numpy()[0])

    if i % show_every == 0:
        print('Iteration %05d    Loss %f   PSNR_noisy: %f   PSRN_gt: %f PSNR_gt_sm: %f' % (
            i, total_loss.item(), psrn_noisy, psrn_gt, psrn_gt_sm))

    if i % show_every:
        if psrn_noisy - psrn_noisy_last < -5:
            print('Falling back to previous checkpoint.')

            for new_param, net_param in zip(last_net, net.parameters()):
                net_param.data.copy_(new_param)

            return total_loss * 0
        else:
            last_net = [x.detach().cpu() for x in net.parameters()]
            psrn_noisy_last = psrn_noisy

    i += 1

    return total_loss


p = get_params(OPT_OVER, net, net_input)
optimize(OPTIMIZER, p, closure, LR, num_iter)

out_np = torch_to_np(net(net_input))
print('final PSNR_gt', compare_psnr(img_np, np.clip(out_np, 0, 1)))
