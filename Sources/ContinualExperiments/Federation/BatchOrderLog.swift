import ContinualCore

/// The order in which a traced round's local steps visited the round's data (`federation.trace`):
/// a loop observer on the client's learner (and one on its personal learner) for the round only,
/// which appends the rows of every step, so that the trace states each step's batch exactly and
/// `fedtrace_local.py` can retrain mini-batch rounds. An observer only watches: the steps, and
/// every number of the run, are those of an untraced round (`FederationTraceTests`).
///
/// The rows index the training set the loop drew from. That is the round's data (the trace's
/// `data_inputs`) unless a strategy plugin adjusted the training set (replay adds stored rows):
/// then the log is dropped (`adjusted`), since its indices would point at rows the trace lacks.
struct BatchOrderLog: LoopObserver {
    var name: String { "federation.trace.batch_order" }
    /// Rows of each step, step after step, loop after loop (FedRep: the head phase, then the body).
    private(set) var rows: [Int] = []
    /// Whether a loop trained on a training set other than the round's own rows.
    private(set) var adjusted = false

    mutating func experienceWillTrain(index: Int, trainingSet: Samples, own: Samples, predictor: inout Predictor) {
        if trainingSet.count != own.count || trainingSet.labels != own.labels { adjusted = true }
    }

    mutating func rowsWillTrain(_ rows: ArraySlice<Int>, of trainingSet: Samples, experience index: Int,
                                predictor: inout Predictor) {
        self.rows.append(contentsOf: rows)
    }

    /// Rows an algorithm's own loop visited (pFedMe's and Per-FedAvg's batches), which no loop
    /// observer sees.
    mutating func append(_ visited: [Int]) { rows.append(contentsOf: visited) }

    /// The order the trace writes: empty when a loop trained on an adjusted set.
    var order: [Int] { adjusted ? [] : rows }

    /// Lives for one round and is never part of a checkpoint (a traced run cannot resume).
    func checkpointState() -> PluginState { PluginState() }
    mutating func restore(from state: PluginState) throws {}
}

extension Trainer {
    /// Starts logging the order of this learner's steps (a traced round).
    mutating func startBatchOrderLog() { observers.append(BatchOrderLog()) }

    /// Stops logging and returns the order logged since `startBatchOrderLog` (empty without one).
    mutating func endBatchOrderLog() -> [Int] {
        guard let k = observers.lastIndex(where: { $0 is BatchOrderLog }), let log = observers.remove(at: k) as? BatchOrderLog
        else { return [] }
        return log.order
    }

    /// Adds rows an own loop visited to the running log (nothing when none runs: untraced).
    mutating func logOwnLoopRows(_ visited: [Int]) {
        guard let k = observers.lastIndex(where: { $0 is BatchOrderLog }), var log = observers[k] as? BatchOrderLog else { return }
        log.append(visited)
        observers[k] = log
    }

    /// Whether a batch-order log runs (own loops record their batches only then).
    var logsBatchOrder: Bool { observers.contains { $0 is BatchOrderLog } }
}
