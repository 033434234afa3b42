/**
 * Mocha's spec reporter, plus one plain closing line ("N passed, N failed, N pending") that
 * CI and people reading a log can find without knowing mocha's own wording. A pending test is
 * one that needs what no registry serves (test/support/supplied.ts), which was not supplied.
 */
import Mocha from "mocha";

class SummaryReporter extends Mocha.reporters.Spec {
    constructor(runner: Mocha.Runner, options?: Mocha.MochaOptions) {
        super(runner, options);
        runner.once(Mocha.Runner.constants.EVENT_RUN_END, () => {
            const s = this.stats;
            console.log(`tests: ${s.passes} passed, ${s.failures} failed, ${s.pending} pending`);
        });
    }
}

export = SummaryReporter;
