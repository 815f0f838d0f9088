/**
 * The client's one way to tell the app what happened: `client.on(name, listener)`, typed by name
 * (ClientEventMap in events.ts gives each name its arguments), returning the function that stops
 * listening. A Set per name: a listener added twice is called once.
 */
export class Emitter<Events extends { [K in keyof Events]: unknown[] }> {
  // Each set holds listeners of its own name's arguments; the map cannot say so, hence the casts.
  private readonly listeners = new Map<keyof Events, Set<(...args: unknown[]) => void>>();

  on<K extends keyof Events>(name: K, listener: (...args: Events[K]) => void): () => void {
    let set = this.listeners.get(name);
    if (!set) this.listeners.set(name, (set = new Set()));
    const l = listener as (...args: unknown[]) => void;
    set.add(l);
    return () => void set.delete(l);
  }

  /** Calls each listener of `name` in the order they were added (a copy: a listener may unsubscribe itself). */
  emit<K extends keyof Events>(name: K, ...args: Events[K]): void {
    const set = this.listeners.get(name);
    if (!set) return;
    for (const l of [...set]) l(...args);
  }
}
