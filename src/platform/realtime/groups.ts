/** What the index needs from a connection: whose it is and the groups it belongs to. */
export interface GroupMember {
  readonly userId: string;
  readonly groups: Set<string>;
}

/**
 * The replica's local view: which connections belong to each group and to each user. A group or
 * user entry disappears with its last connection, so memory follows the open sockets only.
 */
export class GroupIndex<C extends GroupMember> {
  private readonly byGroup = new Map<string, Set<C>>();
  private readonly byUser = new Map<string, Set<C>>();

  /** Adds the connection to its user; true when it is the user's first connection here. */
  addConnection(conn: C): boolean {
    const set = this.byUser.get(conn.userId);
    if (set) {
      set.add(conn);
      return false;
    }
    this.byUser.set(conn.userId, new Set([conn]));
    return true;
  }

  /** Drops the connection from its user and all its groups; true when it was the user's last one here. */
  removeConnection(conn: C): boolean {
    for (const group of conn.groups) this.detach(conn, group);
    conn.groups.clear();
    const set = this.byUser.get(conn.userId);
    if (!set?.delete(conn)) return false;
    if (set.size > 0) return false;
    this.byUser.delete(conn.userId);
    return true;
  }

  join(conn: C, group: string): void {
    if (conn.groups.has(group)) return;
    conn.groups.add(group);
    const set = this.byGroup.get(group);
    if (set) set.add(conn);
    else this.byGroup.set(group, new Set([conn]));
  }

  leave(conn: C, group: string): void {
    if (!conn.groups.delete(group)) return;
    this.detach(conn, group);
  }

  inGroup(group: string): ReadonlySet<C> | undefined {
    return this.byGroup.get(group);
  }

  ofUser(userId: string): ReadonlySet<C> | undefined {
    return this.byUser.get(userId);
  }

  users(): string[] {
    return [...this.byUser.keys()];
  }

  *all(): Iterable<C> {
    for (const set of this.byUser.values()) yield* set;
  }

  get groupCount(): number {
    return this.byGroup.size;
  }

  private detach(conn: C, group: string): void {
    const set = this.byGroup.get(group);
    if (!set) return;
    set.delete(conn);
    if (set.size === 0) this.byGroup.delete(group);
  }
}

/** The group every connection of a user joins; the realtime dispatcher pushes `User` targets here. */
export const userGroup = (userId: string): string => `user:${userId}`;
