import Foundation
import ContinualCore

/// A run ready to execute: its config and its stable id.
public struct ResolvedRun: Sendable, Equatable {
    public var config: RunConfig
    public var canonicalJSON: String
    public var runId: String
    /// The variant it came from (the experiment name without variants).
    public var variant: String = ""
    /// Position in the experiment's expansion (variants × sweep points); orders summary rows.
    public var sweepIndex: Int = 0
    /// The swept values that made this run, in the sweep's parameter order ([] without a sweep).
    public var sweepValues: [SweepValue] = []

    public init(config: RunConfig) {
        self.config = config
        self.canonicalJSON = config.canonicalJSON()
        self.runId = StableHash.hex(StableHash.fnv1a64(canonicalJSON))
    }
}
