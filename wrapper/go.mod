module gpu-workers/wrapper

go 1.19
