// Command mutatecases runs the mutants that gremlins (the mutation tester
// `make mutate` uses) can never run, and prints the package's figures with
// them counted.
//
// gremlins counts a mutant as covered only when its position lies in a
// statement block of the Go cover profile, and runs only covered mutants.
// Two kinds of code lie in no block, however many tests run them: the
// expressions of a `case` in a `switch` (`case e.err != nil:`, `case n <
// 0:`), which the cover tool counts with neither the switch statement nor
// the case's body, and constant declarations (`OpAlloc Op = iota + 1`), which
// the compiler evaluates. gremlins reports their mutants as NOT COVERED and
// never tests them, so a package with many such cases cannot reach the
// project's mutator coverage goal, whatever its tests do.
//
// mutatecases reads gremlins' JSON output for one package (-json, written by
// `gremlins unleash -o`), keeps the NOT COVERED mutants whose position lies in
// the expression list of a case clause of a switch statement or in a const
// declaration, and leaves every other one not covered (that code really did
// not run). It runs the package's tests once with a cover profile, in a copy of
// the module: a case mutant counts as reached when the block that holds its
// switch statement ran, or any block inside the switch's body did; a const
// mutant always counts as reached. Each reached mutant is applied to the copy
// by replacing exactly its operator token (checked against the parsed source,
// with gremlins' own table of replacements), and the package's tests run on it
// with a timeout of -timeout-coefficient times the cover run's time, as
// gremlins does. The outcome is KILLED (a test failed), LIVED (the tests
// passed), TIMED OUT, or NOT VIABLE (the mutant does not compile; it counts in
// neither figure — gremlins means to do the same, but with the go command's
// exit status 1 for a build failure it reports such a mutant as KILLED).
//
// It prints one line per mutant in gremlins' style, marked as its own, and
// the figures: gremlins' own, and combined, where
//
//	efficacy = (gK + cK) / (gK + gL + cK + cL)
//	coverage = (gK + gL + cK + cL) / (gK + gL + cK + cL + not covered left)
//
// with gK, gL gremlins' killed and lived mutants, cK, cL those of mutatecases,
// and "not covered left" the NOT COVERED mutants it did not run (a timed-out or
// not viable mutant counts in neither figure, as in gremlins). The work tree is
// never written: everything happens in a copy under the temporary folder,
// removed at the end, on an error, and on SIGINT or SIGTERM.
//
//	gremlins unleash -o build/plan.json ./plan
//	go run ./internal/mutatecases -json build/plan.json -pkg ./plan -timeout-coefficient 10
package main
