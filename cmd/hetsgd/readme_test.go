package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/internal/race"
)

// The README promises that every command in it runs as written. This file
// holds that promise: TestREADMECommands reads every command of README.md's
// sh blocks and runs the short ones, in the README's order, in one fresh
// folder, as a new user would type them; the others are listed in
// readmeCommands with the reason they are not run. A command the table
// does not list fails the test, so a command added to the README must be
// classified, and so must one that is changed.

// readmeRun marks a command of readmeCommands that the test runs.
const readmeRun = ""

// readmeCommands classifies each command of the README's sh blocks, as the
// README writes it (comments dropped, lines joined, spaces collapsed): run
// (readmeRun: it runs in a few seconds on the bundled data or on what an
// earlier command wrote), or the reason it is not run.
var readmeCommands = map[string]string{
	"go run ./cmd/hetsgd train":       "builds the tool; the same command, hetsgd train, runs below",
	"scripts/test.sh":                 "the whole test suite",
	"go install ./cmd/hetsgd":         "builds the tool; this test runs its own binary as the tool",
	"go build -o hetsgd ./cmd/hetsgd": "builds the tool; this test runs its own binary as the tool",

	"hetsgd train": readmeRun,
	"hetsgd train --strategy adaptive --devices 4 --speeds 1,0.9,0.8,0.68 --time virtual":                                                   readmeRun,
	"hetsgd train --strategy adaptive --devices 4 --speeds 1,0.9,0.8,0.68":                                                                  readmeRun,
	"hetsgd train --strategy lsgd --topology 4x4 --time virtual --epochs 5":                                                                 readmeRun,
	"hetsgd train --workload regression --strategy adacons --devices 8 --batch 64 --optimizer sgd --line-search --time virtual --epochs 25": readmeRun,
	"hetsgd train --output lsh":                      readmeRun,
	"hetsgd train --precision bf16":                  readmeRun,
	"hetsgd-cuda train --backend gpu":                "needs an NVIDIA GPU and a binary built with -tags cuda (package gpu's TestTrainOnGPUAsOnHost runs it on the emulator)",
	"hetsgd strategies -v":                           readmeRun,
	"hetsgd train --strategy gem --devices 4 --help": readmeRun,
	"hetsgd train --strategy adaptive --devices 4 --adaptive.beta 4 --print-config > run.yaml": readmeRun,
	"hetsgd train --config run.yaml --epochs 5":                                                readmeRun,

	"hetsgd data stats bundled:bibtex":                                                                          readmeRun,
	"hetsgd data gen --like delicious --scale 0.1 --out data/delicious-like":                                    readmeRun,
	"hetsgd train --data data/delicious-like --epochs 5 --log delicious.jsonl":                                  readmeRun,
	"hetsgd data gen --like amazon-670k --points 60000 --out data/amz60k":                                       readmeRun,
	"hetsgd data from-text --train train.tsv --test test.tsv --out data/mine":                                   "needs the user's text files (tfidf.TestConvertAndLoad converts a corpus)",
	"hetsgd data gen --like bundled:bibtex --out data/bibtex-like":                                              "the fit trains the model on the set and its stand-in's samples: 1.6 minutes on two idle cores",
	"hetsgd train --data data/amz60k --strategy elastic --batch 256 --epochs 3 --eval-points 4000 --output lsh": "three epochs of 60,000 points over 670,091 labels: 5 minutes and 4.8 GiB on two busy cores",

	"hetsgd train --checkpoint ck --epochs 10 --log run.jsonl":                                               readmeRun,
	"hetsgd train --resume ck --epochs 15":                                                                   readmeRun,
	"hetsgd eval --model ck --which best --data bundled:bibtex":                                              readmeRun,
	"hetsgd predict --model ck --data bundled:bibtex --top 5 --out top5.tsv":                                 readmeRun,
	"hetsgd export --model ck --out model.npz":                                                               readmeRun,
	"hetsgd serve --model ck":                                                                                "serves until Ctrl-C (TestServeFollowsTheRun serves a run's folder)",
	"curl -s localhost:8000/predict -d '{\"instances\": [{\"indices\": [3, 17, 200]}], \"top_k\": 5}'":       "asks a running server (TestServeFollowsTheRun asks one)",
	"curl -s localhost:8000/predict -d '{\"texts\": [\"a shell with command-line editing\"], \"top_k\": 3}'": "asks a running server of a text model (serve.TestTextIsItsRow asks one)",
	"hetsgd train --data data/mine --epochs 5 --checkpoint ck-text":                                          "trains on the user's text (TestPredictText trains on a corpus's)",
	"hetsgd predict --model ck-text --text queries.txt --top 3":                                              "needs the user's text model (TestPredictText predicts on text)",

	"hetsgd plot --x epoch --out p1 run.jsonl delicious.jsonl":                readmeRun,
	"hetsgd dashboard run.jsonl delicious.jsonl":                              "serves its page until Ctrl-C (TestDashboard* serve it)",
	"hetsgd train --strategy adaptive --devices 4 --dashboard 127.0.0.1:8080": "keeps its page up after the run until Ctrl-C (TestTrainDashboardStreams runs it)",

	"hetsgd tune --strategies sync,elastic,adaptive --lrs default --optimizer strategy --epochs 5":  readmeRun,
	"hetsgd tune --strategies sync,elastic,adaptive,gem --lrs 0.01:10 --batches 64,128 --seeds 1,2": "112 runs of 10 epochs on 4 devices: minutes",

	"hetsgd launch --max-restarts 3 -- hetsgd train --checkpoint ck-job --epochs 5": readmeRun,

	"go build -tags mpi -o hetsgd-mpi ./cmd/hetsgd":                                                                   "the mpi build needs cgo and OpenMPI; scripts/test.sh tests it",
	"mpirun -np 4 --oversubscribe --bind-to none ./hetsgd-mpi train --strategy lsgd --groups 2":                       "MPI: the mpi build's tests run the tool under mpirun",
	"mpirun -np 2 --bind-to none ./hetsgd-mpi train --strategy adaptive --devices-per-rank 2 --speeds 1,0.9,0.8,0.68": "MPI: the mpi build's tests run the tool under mpirun",
	"hetsgd launch -- mpirun -np 2 --bind-to none ./hetsgd-mpi train --checkpoint ck-mpi --epochs 5":                  "MPI: TestMPILaunchRestarts runs launch under mpirun in the mpi build",
	"mpirun -np 2 ./hetsgd-mpi calibrate --network --out net.json":                                                    "MPI: TestMPICalibrateNetwork runs it in the mpi build",

	"hetsgd bench --quick --out report-quick":               "a minute and a half (TestBench* run parts of it)",
	"hetsgd bench --study all --out report --data DATA_DIR": "over an hour, on datasets that are not bundled",
	"hetsgd calibrate --quick --out cost.json":              readmeRun,
	"hetsgd step":    "half a minute and 1.5 GB: the Amazon-670k shape (TestStepCommand times a small one)",
	"hetsgd version": readmeRun,
}

// readmeCommand is one command of the README's sh blocks.
type readmeCommand struct {
	line int      // README.md's line where it starts
	text string   // as readmeCommands keys it
	args []string // its words, quotes removed
	out  string   // the file its standard output is redirected to ("": none)
}

// readmeCommands reads the commands of README.md's sh blocks: a line
// continued with a backslash is joined to the next, a # that starts a word
// outside quotes starts a comment, and "> FILE" redirects the standard
// output.
func readREADMECommands(t *testing.T, path string) []readmeCommand {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cmds []readmeCommand
	sc := bufio.NewScanner(f)
	inSh, n, start, pending := false, 0, 0, ""
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			inSh = !inSh && trimmed == "```sh"
			continue
		}
		if !inSh {
			continue
		}
		if pending == "" {
			start = n
		}
		if joined, ok := strings.CutSuffix(line, "\\"); ok {
			pending += joined + " "
			continue
		}
		words, err := shellWords(pending + line)
		pending = ""
		if err != nil {
			t.Fatalf("README.md:%d: %v", start, err)
		}
		if len(words) == 0 {
			continue
		}
		c := readmeCommand{line: start, text: strings.Join(words, " ")}
		for i := 0; i < len(words); i++ {
			if words[i] == ">" && i+1 < len(words) {
				c.out = words[i+1]
				i++
				continue
			}
			c.args = append(c.args, strings.Trim(words[i], `'"`))
		}
		cmds = append(cmds, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cmds
}

// shellWords splits a command line as a shell does for the README's
// commands: words separated by spaces, quotes kept on their word (the
// caller drops them; readmeCommands keys a command with its quotes), and a
// word that starts with # ending the line.
func shellWords(line string) ([]string, error) {
	var words []string
	var word strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0:
			word.WriteRune(r)
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
			word.WriteRune(r)
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		case r == '#' && !inWord:
			return words, nil
		default:
			inWord = true
			word.WriteRune(r)
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed %c in %q", quote, line)
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}

// The shell words of the README's commands: comments, quotes and
// redirections as readREADMECommands reads them.
func TestShellWords(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"hetsgd train   --epochs 5   # a comment", "hetsgd|train|--epochs|5"},
		{"hetsgd tune --strategies 'a,b[x=1]' --lrs default", "hetsgd|tune|--strategies|'a,b[x=1]'|--lrs|default"},
		{`hetsgd train --log "my run.jsonl"`, `hetsgd|train|--log|"my run.jsonl"`},
		{"hetsgd dashboard run.jsonl   # serves http://127.0.0.1:8080#top", "hetsgd|dashboard|run.jsonl"},
		{"hetsgd data gen --like a#b", "hetsgd|data|gen|--like|a#b"},
		{"# only a comment", ""},
	} {
		words, err := shellWords(c.line)
		if got := strings.Join(words, "|"); err != nil || got != c.want {
			t.Errorf("%q: %q, %v; want %q", c.line, got, err, c.want)
		}
	}
	if _, err := shellWords("hetsgd tune --strategies 'a,b"); err == nil {
		t.Error("an unclosed quote is not an error")
	}
}

// Every command of the README is classified, and the short ones run as
// written, in order, in one folder: each exits 0. The first training
// command prints what the README shows it printing.
func TestREADMECommands(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector runs the tool several times slower; the ordinary test stage runs the README's commands")
	}
	if len(comm.Transports()) > 0 {
		t.Skip("the plain build's tests run the README's commands; this build's tests are its transport's")
	}
	readme := filepath.Join("..", "..", "README.md")
	cmds := readREADMECommands(t, readme)
	seen := map[string]bool{}
	for _, c := range cmds {
		seen[c.text] = true
		if _, ok := readmeCommands[c.text]; !ok {
			t.Errorf("README.md:%d: %q is not in readmeCommands: add it, to run (readmeRun) if it runs in a few seconds on the bundled data, else with the reason it is not run", c.line, c.text)
		}
	}
	for text := range readmeCommands {
		if !seen[text] {
			t.Errorf("readmeCommands lists %q, which README.md no longer holds", text)
		}
	}
	if t.Failed() {
		return
	}

	tool, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A folder on PATH holds "hetsgd", this test binary (which is the tool
	// when asTool is set), for the commands a command starts (launch's job).
	bin, work := t.TempDir(), t.TempDir()
	if err := os.Symlink(tool, filepath.Join(bin, "hetsgd")); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), asTool+"=1", "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HETSGD_CACHE="+t.TempDir())
	ran := 0
	for _, c := range cmds {
		if readmeCommands[c.text] != readmeRun {
			continue
		}
		if c.args[0] != "hetsgd" {
			t.Fatalf("README.md:%d: %q: only hetsgd's commands run here", c.line, c.text)
		}
		stdout := runREADMECommand(t, c, tool, work, env)
		ran++
		if c.text == "hetsgd train" {
			checkREADMEOutput(t, readme, stdout)
		}
	}
	t.Logf("ran %d of the README's %d commands", ran, len(cmds))
}

// runREADMECommand runs one command in the folder work and returns its
// standard output; a command that exits non-zero fails the test.
func runREADMECommand(t *testing.T, c readmeCommand, tool, work string, env []string) string {
	t.Helper()
	// A deadline that only catches a hang: the slowest command run here
	// takes seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, c.args[1:]...)
	cmd.Dir, cmd.Env = work, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	err := cmd.Run()
	// The time is logged for whoever sizes this test (go test -v), never
	// checked: a run's time follows the machine's load.
	t.Logf("README.md:%d: %s: %.1f s", c.line, c.text, time.Since(began).Seconds())
	if c.out != "" && err == nil {
		err = os.WriteFile(filepath.Join(work, c.out), stdout.Bytes(), 0o644)
	}
	if err != nil {
		t.Fatalf("README.md:%d: %s: %v\n%s", c.line, c.text, err, stderr.String())
	}
	return stdout.String()
}

// checkREADMEOutput compares what hetsgd train printed with the README's
// text block after its first run: the same header line, epoch lines of the
// same form, and a summary of the same form. The figures themselves are the
// machine's (its kernels may round differently), so only their form is
// compared.
func checkREADMEOutput(t *testing.T, readme, stdout string) {
	t.Helper()
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(b), "```text\n")
	if ok {
		block, _, ok = strings.Cut(block, "```")
	}
	if !ok {
		t.Fatal("README.md has no text block of the first run's output")
	}
	shown := strings.Split(strings.TrimSpace(block), "\n")
	got := strings.Split(strings.TrimSpace(stdout), "\n")
	if shown[0] != got[0] {
		t.Errorf("hetsgd train's header line:\n%s\nthe README shows:\n%s", got[0], shown[0])
	}
	epoch := regexp.MustCompile(`^epoch +\d+\.\d\d  train +\d+\.\d\ds  P@1 \d\.\d{4}  P@3 \d\.\d{4}  P@5 \d\.\d{4}  nDCG@5 \d\.\d{4}  PSP@5 \d\.\d{4}  loss \d+\.\d{4}  train loss \d+\.\d{4}$`)
	memory := regexp.MustCompile(`^peak memory \d+\.\d\d GiB \(max RSS\)$`)
	summary := regexp.MustCompile(`^best P@1 \d\.\d{4} at \d+\.\d\d train seconds \(epoch \d+\.\d\d\)$`)
	form := func(lines []string) []string {
		var f []string
		for _, l := range lines[1:] {
			switch {
			case l == "…":
			case epoch.MatchString(l):
				if len(f) == 0 || f[len(f)-1] != "epoch" {
					f = append(f, "epoch")
				}
			case memory.MatchString(l):
				f = append(f, "memory")
			case summary.MatchString(l):
				f = append(f, "summary")
			default:
				f = append(f, "other: "+l)
			}
		}
		return f
	}
	if g, s := strings.Join(form(got), ", "), strings.Join(form(shown), ", "); g != s || s != "epoch, memory, summary" {
		t.Errorf("hetsgd train printed lines of the forms %s; the README shows %s", g, s)
	}
}
