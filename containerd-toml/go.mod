module gpu-workers/containerd-toml

go 1.19

require github.com/BurntSushi/toml v1.6.0
