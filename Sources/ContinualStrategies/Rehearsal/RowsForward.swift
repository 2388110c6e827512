import ContinualCore

/// Runs another model (the previous one, for distillation: iCaRL, BiC) over the rows of a
/// batch-loss pass, on a workspace of its own (the loop's holds the activations of the pending
/// backward pass). Buffers grow once and are reused step after step.
struct RowsForward {
    private var workspace: Workspace?
    private var gathered: [Float] = []

    /// `model`'s logits for `input.rows` through the pass's route, [rows × logitCount], valid
    /// until the next call.
    mutating func logits(_ model: MLP, _ input: BatchLossInput, batchSize: Int) -> UnsafeMutablePointer<Float> {
        let n = input.rows.count, d = input.batch.dimension
        if workspace == nil || workspace!.capacity < n { workspace = model.makeWorkspace(capacity: max(n, batchSize * 4)) }
        if gathered.count < n * d { gathered = [Float](repeating: 0, count: n * d) }
        for (k, row) in input.rows.enumerated() { gathered.replaceSubrange((k * d)..<((k + 1) * d), with: input.batch.row(row)) }
        let ws = workspace!
        gathered.withUnsafeBufferPointer { model.forward($0.baseAddress!, count: n, route: input.route, workspace: ws) }
        return ws.logits
    }
}
