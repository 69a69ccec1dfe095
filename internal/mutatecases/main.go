package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	var opts Options
	flag.StringVar(&opts.JSON, "json", "", "gremlins' JSON output for the package (gremlins unleash -o)")
	flag.StringVar(&opts.Pkg, "pkg", "", "the package gremlins ran on, as given to it (./plan)")
	flag.IntVar(&opts.TimeoutCoefficient, "timeout-coefficient", 10,
		"a mutant's tests time out after this many times the package's cover run")
	flag.IntVar(&opts.Workers, "workers", 1, "mutants tested at once, each in a copy of the module of its own")
	flag.BoolVar(&opts.ListOnly, "list", false, "only list the mutants it would run; run no tests")
	flag.Parse()
	if opts.JSON == "" || opts.Pkg == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: mutatecases -json gremlins.json -pkg ./pkg [-timeout-coefficient 10] [-workers 1] [-list]")
		os.Exit(2)
	}
	root, err := os.Getwd()
	if err == nil {
		opts.Root, err = moduleRoot(root)
	}
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err = Run(ctx, opts, os.Stdout)
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		if errors.Is(err, context.Canceled) {
			os.Exit(130)
		}
		os.Exit(1)
	}
}
