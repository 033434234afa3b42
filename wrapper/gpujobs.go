package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Which container holds which GPU, for metrics (docs/gpu-metrics.md). At `create` and `run` the
// wrapper writes, for each GPU every container of the worker gets, a record
// <stateDir>/gpu-jobs/<gpu>/<container id> of key=value lines (the node exporter's collector,
// host/gpu-metrics.sh, reads them as labels), and, where the settings name dcgm-exporter's
// job-mapping folder, that folder's file <gpu>: the ids of the containers holding the GPU, one a
// line. At `delete` the C front (front.c, gw_release) removes the container's records and writes
// the mapping files again, without starting Go. Both take an exclusive flock on the gpu-jobs
// folder, so two containers sharing a GPU never lose each other's line.
//
// Root writes only in folders that nobody else can change, reached from / one component at a
// time without following a link (safepath.go), into temp files renamed in place.

// gpuJobsDirName is the records' folder under stateDir; front.c names the same.
const gpuJobsDirName = "gpu-jobs"

// mappingLinkName is a file in the records' folder holding dcgm-exporter's job-mapping folder
// (one line), so that front.c, which never reads the settings, knows where to write at delete.
const mappingLinkName = ".mapping-dir"

// gpuJobs are the settings of the records: the GPUs every container gets, by the index
// nvidia-smi and dcgm-exporter name them with, and dcgm-exporter's job-mapping folder ("": none).
type gpuJobs struct {
	Gpus       []string `json:"gpus"`
	MappingDir string   `json:"mappingDir"`
}

func (g *gpuJobs) validate() error {
	if len(g.Gpus) == 0 {
		return fmt.Errorf("gpuJobs.gpus: expected at least one GPU index")
	}
	for _, i := range g.Gpus {
		if !isGpuIndex(i) {
			return fmt.Errorf("gpuJobs.gpus: %q is not a GPU index", i)
		}
	}
	if g.MappingDir != "" && (!filepath.IsAbs(g.MappingDir) || filepath.Clean(g.MappingDir) != g.MappingDir || g.MappingDir == "/") {
		return fmt.Errorf("gpuJobs.mappingDir must be an absolute path in normal form, not / (got %q)", g.MappingDir)
	}
	return nil
}

// isGpuIndex: digits, as dcgm-exporter's mapping files are named (front.c reads the same form).
func isGpuIndex(s string) bool {
	if s == "" || len(s) > 8 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// validContainerID is runc's own rule for an id (letters, digits, _ + - .), never . or .., so
// that it is one plain file name; front.c checks the same.
func validContainerID(id string) bool {
	if id == "" || id == "." || id == ".." || id[0] == '.' || len(id) > 1024 {
		return false
	}
	for _, c := range id {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '+' || c == '-' || c == '.'
		if !ok {
			return false
		}
	}
	return true
}

// buildEnv names the labels and the environment variables they come from. Concourse sets these
// only in its resource containers (get, put, check); a task's come from its params or image,
// if at all, so they say what the container claims, nothing more.
var buildEnv = [][2]string{{"team", "BUILD_TEAM_NAME"}, {"pipeline", "BUILD_PIPELINE_NAME"}, {"job", "BUILD_JOB_NAME"}, {"build", "BUILD_NAME"}, {"build_id", "BUILD_ID"}}

// jobLabels is a container's record: its id, then each build label (empty where the spec has
// none), then runc's state folder, which tells a leftover record from a live one.
func jobLabels(id, root string, spec object) string {
	env := map[string]string{}
	if process, err := getObject(spec, "process"); err == nil && process != nil {
		var list []string
		if raw, ok := process["env"]; ok && json.Unmarshal(raw, &list) == nil {
			for _, kv := range list {
				if i := strings.IndexByte(kv, '='); i > 0 {
					env[kv[:i]] = kv[i+1:]
				}
			}
		}
	}
	var b strings.Builder
	b.WriteString("container=" + id + "\n")
	for _, pair := range buildEnv {
		b.WriteString(pair[0] + "=" + labelValue(env[pair[1]]) + "\n")
	}
	if root != "" && !strings.ContainsAny(root, "\n\x00") {
		b.WriteString("runc_root=" + root + "\n")
	}
	return b.String()
}

// labelValue keeps a value on its line: control characters dropped, at most 256 bytes.
func labelValue(v string) string {
	out := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, v)
	if len(out) > 256 {
		out = strings.ToValidUTF8(out[:256], "")
	}
	return out
}

// recordGpuJobs writes the container's records and the mapping files; any failure is for the
// log only (metrics must never stop a container).
func recordGpuJobs(g *gpuJobs, id, root string, spec object) error {
	if !validContainerID(id) {
		return fmt.Errorf("GPU job records: container id %q is not a plain file name; none written", id)
	}
	dir, err := openJobsDir(true)
	if err != nil {
		return err
	}
	defer syscall.Close(dir)
	if err := syscall.Flock(dir, syscall.LOCK_EX); err != nil {
		return fmt.Errorf("GPU job records: lock: %v", err)
	}
	labels := []byte(jobLabels(id, root, spec))
	now := time.Now()
	for _, gpu := range g.Gpus {
		if err := syscall.Mkdirat(dir, gpu, 0o755); err != nil && err != syscall.EEXIST {
			return fmt.Errorf("GPU job records: mkdir %s: %v", gpu, err)
		}
		sub, err := openDirAt(dir, gpu)
		if err != nil {
			return fmt.Errorf("GPU job records: %s: %v", gpu, err)
		}
		err = replaceAt(sub, id, labels)
		if err == nil {
			sweepStale(sub, now)
		}
		syscall.Close(sub)
		if err != nil {
			return fmt.Errorf("GPU job records: %s/%s: %v", gpu, id, err)
		}
	}
	if g.MappingDir == "" {
		if err := syscall.Unlinkat(dir, mappingLinkName); err != nil && err != syscall.ENOENT {
			return fmt.Errorf("GPU job records: remove %s: %v", mappingLinkName, err)
		}
		return nil
	}
	if err := setMappingLink(dir, g.MappingDir); err != nil {
		return err
	}
	mapping, made, err := openDirNoLinks(g.MappingDir, 0o755)
	if nerr := noteMade(dir, made); nerr != nil && err == nil {
		err = nerr
	}
	if err != nil {
		if mapping >= 0 {
			syscall.Close(mapping)
		}
		return fmt.Errorf("dcgm-exporter job mapping %s: %v; not written", g.MappingDir, err)
	}
	defer syscall.Close(mapping)
	for _, gpu := range g.Gpus {
		if err := writeMapping(dir, mapping, gpu); err != nil {
			return fmt.Errorf("dcgm-exporter job mapping %s/%s: %v", g.MappingDir, gpu, err)
		}
	}
	return nil
}

// openJobsDir opens <stateDir>/gpu-jobs (openDirNoLinks' rule all the way), made when create is set.
func openJobsDir(create bool) (int, error) {
	return openStateFolder("GPU job records", gpuJobsDirName, 0o755, create)
}

// madeListName is a file in the records' folder: the folders the wrapper made on the way to the
// mapping folder, one a line, parents first, so that the install script's remove takes back
// those and no other (host/install-runc-wrapper.sh).
const madeListName = ".made"

// noteMade adds made to the records' list of the folders the wrapper made.
func noteMade(dir int, made []string) error {
	if len(made) == 0 {
		return nil
	}
	var lines []string
	if fd, err := syscall.Openat(dir, madeListName, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0); err == nil {
		f := os.NewFile(uintptr(fd), madeListName)
		data := make([]byte, 1<<16)
		n, _ := f.Read(data)
		f.Close()
		if n > 0 {
			lines = strings.Split(strings.TrimSuffix(string(data[:n]), "\n"), "\n")
		}
	}
	lines = append(lines, made...)
	if err := replaceAt(dir, madeListName, []byte(strings.Join(lines, "\n")+"\n")); err != nil {
		return fmt.Errorf("GPU job records: %s: %v", madeListName, err)
	}
	return nil
}

func openDirAt(dir int, name string) (int, error) {
	return syscall.Openat(dir, name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
}

// replaceAt writes name in dir through a temp file of its own and a rename.
func replaceAt(dir int, name string, data []byte) error {
	tmp := ".tmp-" + name
	if err := syscall.Unlinkat(dir, tmp); err != nil && err != syscall.ENOENT {
		return err
	}
	fd, err := syscall.Openat(dir, tmp, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = syscall.Renameat(dir, tmp, dir, name)
	}
	if werr != nil {
		syscall.Unlinkat(dir, tmp)
	}
	return werr
}

// setMappingLink names the mapping folder in the records' folder, unless it already does.
func setMappingLink(dir int, target string) error {
	if fd, err := syscall.Openat(dir, mappingLinkName, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0); err == nil {
		buf := make([]byte, 4097)
		n, _ := syscall.Read(fd, buf)
		syscall.Close(fd)
		if n > 0 && string(buf[:n]) == target+"\n" {
			return nil
		}
	}
	if err := replaceAt(dir, mappingLinkName, []byte(target+"\n")); err != nil {
		return fmt.Errorf("GPU job records: %s: %v", mappingLinkName, err)
	}
	return nil
}

// writeMapping writes dcgm-exporter's file for gpu: the ids of the containers with a record
// there, one a line, sorted; no file when there is none.
func writeMapping(dir, mapping int, gpu string) error {
	ids, err := recordsAt(dir, gpu)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		if err := syscall.Unlinkat(mapping, gpu); err != nil && err != syscall.ENOENT {
			return err
		}
		return nil
	}
	return replaceAt(mapping, gpu, []byte(strings.Join(ids, "\n")+"\n"))
}

// recordsAt lists the container ids with a record for gpu (temp files start with a dot).
func recordsAt(dir int, gpu string) ([]string, error) {
	sub, err := openDirAt(dir, gpu)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(sub), gpu)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	ids := names[:0]
	for _, n := range names {
		if !strings.HasPrefix(n, ".") {
			ids = append(ids, n)
		}
	}
	sort.Strings(ids)
	return ids, nil
}
