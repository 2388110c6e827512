/// When the replay buffer takes in new samples (`"update"` option).
///
/// `stream`: every own sample is offered as it is trained, in the first epoch only (so the
/// epoch count does not multiply the stream); `experience_end`: the experience's training set is
/// offered (or selected from) after training on it.
public enum ReplayUpdate: String, CaseIterable, Codable, Sendable {
    case stream
    case experienceEnd = "experience_end"
}
