import ContinualCore

/// How a parameter-isolation plugin picks the adapter (or LoRA) copy for a sample.
///
/// - `task_id`: route = experience index (task-incremental; the id is given at test time).
/// - `context`: a named scenario feature (e.g. habit drift's `weekend_tomorrow`) thresholded at
///   0.5 picks one of two copies (0: value < 0.5, 1: value ≥ 0.5); each context's copy trains on
///   that context's samples of every experience, so no task id is needed for the adapter.
/// - `entropy`: task-free; every copy trained so far predicts, and per sample the copy whose
///   predictive distribution has the lowest entropy wins.
public enum RoutingMode: String, Sendable, Codable, CaseIterable, Equatable {
    case taskId = "task_id"
    case context
    case entropy
}
