package main

import (
	"flag"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/internal/atomicfile"
	"github.com/hetsgd/hetsgd/setting"
	"github.com/hetsgd/hetsgd/train"
)

func suggest(name string, names []string, prefix string) string {
	return setting.Suggest(name, names, prefix)
}
func visited(fs *flag.FlagSet) map[string]bool            { return train.Visited(fs) }
func isRegular(path string) bool                          { return atomicfile.IsRegular(path) }
func exists(path string) bool                             { return atomicfile.Exists(path) }
func dataInputs(in *atomicfile.Inputs) func(string, bool) { return in.Opened }
func loadData(l data.Loader, trainPath, testPath, dir string) (*data.Dataset, *data.Dataset, string, error) {
	return train.LoadData(l, trainPath, testPath, dir)
}
func loadNetwork(path string) (comm.Model, error) { return train.LoadNetwork(path) }

type trainFlags = train.Settings

func flagNames(fs *flag.FlagSet) []string { return train.FlagNames(fs) }

const (
	bundledPoints  = train.BundledPoints
	bundledDefault = train.BundledDefault
)

type (
	intList   = train.IntList
	floatList = train.FloatList
)
