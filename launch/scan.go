package launch

import (
	"io"
	"strings"
	"sync"
)

// How the launcher learns why a job failed. Its exit status says most:
// mpirun exits with the status of the first rank that failed, so a rank's
// usage error (the tool's exit status 2), its stop by a signal (128 + N:
// 130 for SIGINT, 143 for SIGTERM) and its crash (137 for SIGKILL, 139
// for SIGSEGV) reach the launcher as they would from the one process. What
// the status cannot say — mpirun's own refusals, which exit 1 like a
// lost host — mpirun says on its stderr, in messages of fixed words, which
// the launcher reads as the job's stderr passes through to its own,
// unchanged (scanner). The job's own messages are not read for their
// words: they are its, and may change; the launcher tells the job's own
// errors by their status and by when they came (before its first step).

// mpiRefusal is a message of mpirun's for a failure that no restart of the
// same command can fix, with the fix.
type mpiRefusal struct {
	words, why, fix string
}

// mpiRefusals are Open MPI's (mpirun 4 and 5).
var mpiRefusals = []mpiRefusal{
	{"There are not enough slots available in the system",
		"mpirun has too few slots for the ranks asked for, which no restart changes",
		"add --oversubscribe to mpirun's flags to run more ranks than the hosts have cores, or ask for fewer ranks (-np)"},
	{"could not access or execute an executable",
		"mpirun could not start the program, which no restart changes",
		"check the program's path in the job's command (mpirun looks it up from the folder it runs in, or in PATH)"},
	{"mpirun has detected an attempt to run as root",
		"mpirun refuses to run as root, which no restart changes",
		"add --allow-run-as-root to mpirun's flags, or run the job as another user"},
}

// rankErrorWords are mpirun's words for a rank that exited with an error
// status of its own (not killed by a signal): the job refused something.
const rankErrorWords = "exited with non-zero status"

// scanner passes what is written to it on to w unchanged, and reads each
// line for mpirun's messages. Lines are read up to maxLine bytes: the
// messages are short, and a longer line is not one of them.
type scanner struct {
	w io.Writer

	mu        sync.Mutex
	line      []byte
	long      bool // the line so far is longer than maxLine
	refusal   *mpiRefusal
	rankError bool
}

const maxLine = 512

func (s *scanner) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range p[:n] {
		if b != '\n' {
			if len(s.line) < maxLine {
				s.line = append(s.line, b)
			} else {
				s.long = true
			}
			continue
		}
		s.match()
		s.line, s.long = s.line[:0], false
	}
	return n, err
}

// match reads the line held.
func (s *scanner) match() {
	if s.long {
		return
	}
	line := string(s.line)
	for i := range mpiRefusals {
		if s.refusal == nil && strings.Contains(line, mpiRefusals[i].words) {
			s.refusal = &mpiRefusals[i]
		}
	}
	s.rankError = s.rankError || strings.Contains(line, rankErrorWords)
}

// seen returns what the lines said (the last one too, if it has no
// newline).
func (s *scanner) seen() (refusal *mpiRefusal, rankError bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.match()
	return s.refusal, s.rankError
}
