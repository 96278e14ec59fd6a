//! The threads MCP calls run on: as many as there are cores while calls are
//! short, more only while some are stuck (waiting on a command, a person,
//! or simply long).
//!
//! tokio's blocking pool starts a thread for every call that finds none
//! idle, so 50 calls in flight meant 50 runnable threads on two cores and a
//! long latency tail. Here `core` workers take calls from one queue; a
//! monitor adds a worker when calls are queued and fewer than `core`
//! workers are free to take them (the others have run their call for more
//! than [`STUCK_AFTER`]); extra workers leave after [`IDLE_EXIT`] without
//! work.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// A call running this long no longer counts as a free worker.
const STUCK_AFTER: Duration = Duration::from_millis(10);

/// How often the monitor looks.
const TICK: Duration = Duration::from_millis(2);

/// An extra worker with nothing to do for this long exits.
const IDLE_EXIT: Duration = Duration::from_secs(2);

type Job = Box<dyn FnOnce() + Send>;

/// A pool of call threads; dropping it lets the threads finish and exit.
pub(crate) struct CallPool {
    inner: Arc<Inner>,
}

struct Inner {
    queue: Mutex<VecDeque<Job>>,
    ready: Condvar,
    /// When each busy worker started its current call, by worker id.
    busy: Mutex<HashMap<usize, Instant>>,
    workers: AtomicUsize,
    next_id: AtomicUsize,
    core: usize,
    max: usize,
    closed: AtomicBool,
}

impl CallPool {
    /// `core` steady workers (at least 1), at most `max` in all.
    pub(crate) fn new(core: usize, max: usize) -> Self {
        let core = core.max(1);
        let inner = Arc::new(Inner {
            queue: Mutex::new(VecDeque::new()),
            ready: Condvar::new(),
            busy: Mutex::new(HashMap::new()),
            workers: AtomicUsize::new(0),
            next_id: AtomicUsize::new(0),
            core,
            max: max.max(core),
            closed: AtomicBool::new(false),
        });
        for _ in 0..core {
            Inner::start_worker(&inner, false);
        }
        let monitor = Arc::downgrade(&inner);
        let _ = std::thread::Builder::new()
            .name("toolhost-pool".into())
            .spawn(move || {
                while let Some(inner) = monitor.upgrade() {
                    if inner.closed.load(Ordering::Relaxed) {
                        return;
                    }
                    inner.grow_if_stuck();
                    drop(inner);
                    std::thread::sleep(TICK);
                }
            });
        Self { inner }
    }

    /// Run `job` on a worker; the receiver gets its result.
    pub(crate) fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> tokio::sync::oneshot::Receiver<T> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = tx.send(job());
        });
        self.inner
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(job);
        self.inner.ready.notify_one();
        rx
    }

    /// How many worker threads exist now.
    #[cfg(test)]
    fn workers(&self) -> usize {
        self.inner.workers.load(Ordering::Relaxed)
    }
}

impl Drop for CallPool {
    fn drop(&mut self) {
        self.inner.closed.store(true, Ordering::Relaxed);
        self.inner.ready.notify_all();
    }
}

impl Inner {
    fn start_worker(inner: &Arc<Self>, extra: bool) {
        let id = inner.next_id.fetch_add(1, Ordering::Relaxed);
        inner.workers.fetch_add(1, Ordering::Relaxed);
        let me = Arc::clone(inner);
        let started = std::thread::Builder::new()
            .name("toolhost-call".into())
            .spawn(move || me.work(id, extra));
        if started.is_err() {
            inner.workers.fetch_sub(1, Ordering::Relaxed);
        }
    }

    fn work(&self, id: usize, extra: bool) {
        crate::runtime::sandbox::runs_work_after_replies();
        loop {
            let job = {
                let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
                let mut idle_since = Instant::now();
                loop {
                    if let Some(job) = queue.pop_front() {
                        break Some(job);
                    }
                    if self.closed.load(Ordering::Relaxed)
                        || (extra && idle_since.elapsed() >= IDLE_EXIT)
                    {
                        break None;
                    }
                    let (next, timeout) = self
                        .ready
                        .wait_timeout(queue, IDLE_EXIT)
                        .unwrap_or_else(PoisonError::into_inner);
                    queue = next;
                    if !timeout.timed_out() {
                        idle_since = Instant::now();
                    }
                }
            };
            let Some(job) = job else {
                self.workers.fetch_sub(1, Ordering::Relaxed);
                return;
            };
            self.set_busy(id, true);
            job();
            // The reply is sent: what the call left for after it.
            crate::runtime::sandbox::after_reply();
            self.set_busy(id, false);
        }
    }

    fn set_busy(&self, id: usize, busy: bool) {
        let mut map = self.busy.lock().unwrap_or_else(PoisonError::into_inner);
        if busy {
            map.insert(id, Instant::now());
        } else {
            map.remove(&id);
        }
    }

    /// Add a worker when calls wait and fewer than `core` workers are not
    /// stuck in a long call.
    fn grow_if_stuck(self: &Arc<Self>) {
        let queued = !self
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty();
        if !queued {
            return;
        }
        let stuck = self
            .busy
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .filter(|since| since.elapsed() >= STUCK_AFTER)
            .count();
        let workers = self.workers.load(Ordering::Relaxed);
        if workers.saturating_sub(stuck) < self.core && workers < self.max {
            Self::start_worker(self, true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Gate = Arc<(Mutex<bool>, Condvar)>;

    /// A job that blocks until `gate` opens.
    fn blocked_until(gate: &Gate) -> impl FnOnce() + Send + 'static {
        let gate = Arc::clone(gate);
        move || {
            let (open, cv) = &*gate;
            let mut open = open.lock().unwrap();
            while !*open {
                open = cv.wait(open).unwrap();
            }
        }
    }

    fn open(gate: &Gate) {
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
    }

    fn wait<T>(rx: tokio::sync::oneshot::Receiver<T>) -> T {
        rx.blocking_recv().expect("the job ran")
    }

    #[test]
    fn short_jobs_stay_on_the_core_workers() {
        let pool = CallPool::new(2, 64);
        let jobs: Vec<_> = (0..500).map(|i| pool.run(move || i * 2)).collect();
        let sum: usize = jobs.into_iter().map(wait).sum();
        assert_eq!(sum, (0..500usize).map(|i| i * 2).sum::<usize>());
        assert!(
            pool.workers() <= 3,
            "{} workers for short jobs",
            pool.workers()
        );
    }

    #[test]
    fn stuck_jobs_do_not_block_the_others() {
        let pool = CallPool::new(1, 8);
        let gate: Gate = Arc::new((Mutex::new(false), Condvar::new()));
        let blockers: Vec<_> = (0..3).map(|_| pool.run(blocked_until(&gate))).collect();
        let started = Instant::now();
        assert_eq!(
            wait(pool.run(|| 42)),
            42,
            "a short job ran beside 3 stuck ones"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        open(&gate);
        blockers.into_iter().for_each(wait);
    }

    #[test]
    fn at_most_max_workers() {
        let pool = CallPool::new(1, 3);
        let gate: Gate = Arc::new((Mutex::new(false), Condvar::new()));
        let jobs: Vec<_> = (0..10).map(|_| pool.run(blocked_until(&gate))).collect();
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(pool.workers(), 3);
        open(&gate);
        jobs.into_iter().for_each(wait);
    }
}
